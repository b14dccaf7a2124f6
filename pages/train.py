import streamlit as st
st.title("Train")
